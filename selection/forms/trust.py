"""The trust policy form: when tool definitions wait for review, what a flagged
result becomes, which personal data counts (``screening.policy``)."""

from __future__ import annotations

from typing import Any

from django import forms

from screening.pii import BUILT_IN
from screening.policy import PolicyError, ScreeningPolicy
from screening.rules import RESULT_CLASSES, RULES

REVIEW_NEW = [
    ("no", "No"),
    ("after-first-sync", "After the first sync"),
    ("always", "Always"),
]
RISKY = [("suspend", "Suspend the tool"), ("keep-pinned", "Keep it pinned")]
ACTIONS = [("redact", "Redact"), ("flag", "Flag"), ("block", "Block")]
CLASS_LABELS = {
    "secrets": "Secrets (cloud keys, tokens, private keys)",
    "injection": "Text aimed at the model (the definitions' rules)",
    "pii": "Personal data (the rules below)",
}


class TrustPolicyForm(forms.Form):
    review_new_tools = forms.ChoiceField(
        label="New tools from a source wait for review",
        choices=REVIEW_NEW,
        help_text=(
            "No: in service at once (screened as always). After the first sync: "
            "the first listing is accepted, every later new tool waits."
        ),
    )
    risky_change = forms.ChoiceField(
        label="On a risky change from a source",
        choices=RISKY,
        help_text=(
            "A change that widens the input schema or makes a hint less safe "
            "(readOnlyHint dropped...): suspend the tool until someone decides, "
            "or keep serving the pinned definition meanwhile."
        ),
    )
    pii_rules = forms.MultipleChoiceField(
        label="Personal-data rules",
        required=False,
        widget=forms.CheckboxSelectMultiple,
        choices=[(name, RULES[name].title) for name in sorted(BUILT_IN)],
    )
    pii_patterns = forms.CharField(
        label="The catalog's own personal-data patterns",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
        help_text=(
            "One a line, name: pattern (RE2: no lookaround or backreferences), "
            "e.g. employee-id: EMP-[0-9]{6}"
        ),
    )
    reason = forms.CharField(label="Reason", required=False, max_length=500)

    def __init__(self, *args: Any, policy: ScreeningPolicy, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for kind in RESULT_CLASSES:
            self.fields[f"results_{kind}"] = forms.ChoiceField(
                label=CLASS_LABELS[kind], choices=ACTIONS
            )
        self.initial.update(
            review_new_tools=policy.review_new_tools,
            risky_change=policy.risky_change,
            pii_rules=list(policy.pii_rules),
            pii_patterns="\n".join(
                f"{p.name}: {p.pattern}" for p in policy.pii_patterns
            ),
            **{f"results_{kind}": policy.action(kind) for kind in RESULT_CLASSES},
        )

    def definition_fields(self) -> list[forms.BoundField]:
        return [self["review_new_tools"], self["risky_change"]]

    def result_fields(self) -> list[forms.BoundField]:
        return [self[f"results_{kind}"] for kind in RESULT_CLASSES]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.errors:
            return data
        trust = {
            "review_new_tools": data["review_new_tools"],
            "risky_change": data["risky_change"],
            "results": {k: data[f"results_{k}"] for k in RESULT_CLASSES},
            "pii_rules": list(data.get("pii_rules") or []),
            "pii_patterns": self._patterns(data.get("pii_patterns") or ""),
        }
        try:
            data["trust"] = ScreeningPolicy.from_dict(trust).to_dict()
        except PolicyError as exc:
            for path, message in exc.errors.items():
                field = "pii_patterns" if "pii_patterns" in path else None
                self.add_error(field, f"{path}: {message}")
        return data

    def _patterns(self, text: str) -> list[dict[str, str]]:
        found = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            name, colon, pattern = line.partition(":")
            if not colon:
                self.add_error(
                    "pii_patterns", f"line {number}: write it as name: pattern"
                )
                continue
            found.append({"name": name.strip(), "pattern": pattern.strip()})
        return found
