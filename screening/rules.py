"""Every screening rule: its id, its class and what it means, for a curator.

Classes: ``model-text`` (text written to steer the model rather than describe a
tool: hidden characters, instructions, markup), ``catalog`` (a definition
against the catalog's norm: length, near-copies), ``secrets`` and ``pii``
(results only). A result's model-text findings are the ``injection`` class of
the catalog's result policy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MODEL_TEXT, CATALOG, SECRETS, PII = "model-text", "catalog", "secrets", "pii"
# The result policy's detector classes (screening.policy).
RESULT_CLASSES = ("secrets", "injection", "pii")


@dataclass(frozen=True)
class Rule:
    id: str
    kind: str
    title: str
    explanation: str


@dataclass(frozen=True)
class Finding:
    """One rule's hit: where (a field path such as ``description`` or
    ``content[0].text``) and the span in that text. ``excerpt`` is set for
    definitions only (their text is shown to curators); a result's finding
    never carries what it matched."""

    rule: str
    where: str
    start: int = 0
    end: int = 0
    excerpt: str = ""

    @property
    def kind(self) -> str:
        return rule_kind(self.rule)

    def as_dict(self, *, excerpt: bool = True) -> dict[str, Any]:
        found: dict[str, Any] = {"rule": self.rule, "class": self.kind}
        found["where"] = self.where
        if excerpt and self.excerpt:
            found["excerpt"] = self.excerpt
        return found


def _rules(*rules: Rule) -> dict[str, Rule]:
    return {rule.id: rule for rule in rules}


RULES = _rules(
    Rule(
        "tag-characters",
        MODEL_TEXT,
        "Unicode tag characters",
        "Characters of the Unicode tag block (U+E0000-U+E007F) render as nothing "
        "but a model reads them: text hidden from every person who reviews it.",
    ),
    Rule(
        "bidi-override",
        MODEL_TEXT,
        "Bidirectional controls",
        "Right-to-left overrides, embeddings and isolates make text read in another "
        "order than it is stored, so a person and the model read different words.",
    ),
    Rule(
        "invisible-characters",
        MODEL_TEXT,
        "Invisible characters",
        "Zero-width and other format or control characters show nothing on screen; "
        "they hide words from reviewers or split words to slip past filters.",
    ),
    Rule(
        "ignore-instructions",
        MODEL_TEXT,
        "Instructions to ignore instructions",
        "Text telling the model to ignore, forget or override its instructions, or "
        "that it now has new ones: a tool describes itself, it does not instruct.",
    ),
    Rule(
        "conceal-from-user",
        MODEL_TEXT,
        "Instructions to hide things from the user",
        "Text telling the model not to tell, show or mention something to the user, "
        "or to act without telling them.",
    ),
    Rule(
        "read-sensitive-files",
        MODEL_TEXT,
        "Instructions to read or send secret files",
        "Text asking to read, include or send files that hold credentials (SSH "
        "keys, cloud credentials, .env files, MCP client settings).",
    ),
    Rule(
        "call-first",
        MODEL_TEXT,
        "Instructions to call this tool first or instead of others",
        "Text telling the model to always call this tool, call it first, before or "
        "instead of other tools: a description may say what a tool is for, not "
        "claim every request.",
    ),
    Rule(
        "call-other-tool",
        MODEL_TEXT,
        "Instructions to call a named tool",
        "Text telling the model to call, run or use a tool by its name: a tool's "
        "description or result steering the agent to another action.",
    ),
    Rule(
        "model-markup",
        MODEL_TEXT,
        "Markup addressed to the model",
        "Tags such as <IMPORTANT>, <system> or chat-template tokens ([INST], "
        "<|im_start|>) that mimic instructions from the system or the user.",
    ),
    Rule(
        "other-tool",
        MODEL_TEXT,
        "Names another tool of the catalog",
        "The definition names a tool of the catalog that is not its own (from "
        "another source, or another tool): a way to steer the agent between tools.",
    ),
    Rule(
        "other-server",
        MODEL_TEXT,
        "Refers to other servers",
        "The definition refers to other MCP servers or their tools (mcp:// "
        "addresses, 'the other server'): tools from one server steering another.",
    ),
    Rule(
        "encoded-blob",
        MODEL_TEXT,
        "Encoded data",
        "A long run of base64, hex or escaped characters (or a data: URL) in a "
        "definition: text no reviewer can read, which a model can decode.",
    ),
    Rule(
        "extreme-length",
        CATALOG,
        "Far longer than the catalog's norm",
        "The description is many times longer than the catalog's typical one: "
        "room for instructions, and for keywords stuffed to win selection.",
    ),
    Rule(
        "near-copy",
        CATALOG,
        "A near-copy of another tool",
        "The description is nearly the same as another tool's of the catalog: a "
        "look-alike that could take the other tool's requests (a confusable).",
    ),
    Rule(
        "aws-access-key-id",
        SECRETS,
        "AWS access key id",
        "An AWS access key id (AKIA..., ASIA...).",
    ),
    Rule(
        "aws-secret-access-key",
        SECRETS,
        "AWS secret access key",
        "A 40-character AWS secret access key next to its key id or its name.",
    ),
    Rule(
        "github-token", SECRETS, "GitHub token", "A GitHub token (ghp_, github_pat_)."
    ),
    Rule("slack-token", SECRETS, "Slack token", "A Slack token (xoxb-, xoxp-...)."),
    Rule("stripe-key", SECRETS, "Stripe key", "A Stripe secret key (sk_live_...)."),
    Rule("google-api-key", SECRETS, "Google API key", "A Google API key (AIza...)."),
    Rule(
        "llm-api-key",
        SECRETS,
        "LLM provider key",
        "An OpenAI or Anthropic style API key (sk-..., sk-ant-...).",
    ),
    Rule(
        "private-key",
        SECRETS,
        "Private key",
        "A PEM private key block (-----BEGIN ... PRIVATE KEY-----).",
    ),
    Rule("jwt", SECRETS, "JSON Web Token", "A signed JSON Web Token (eyJ...eyJ...)."),
    Rule(
        "authorization-header",
        SECRETS,
        "Authorization header",
        "An Authorization header's credential (Bearer or Basic) written out.",
    ),
    Rule(
        "source-header",
        SECRETS,
        "The source's own header value",
        "A value of a header the source sends upstream (its credentials): always "
        "masked, whatever the policy.",
    ),
    Rule("email", PII, "E-mail address", "An e-mail address."),
    Rule(
        "phone",
        PII,
        "Phone number",
        "A phone number in international (+...) or North American form.",
    ),
    Rule(
        "credit-card",
        PII,
        "Payment card number",
        "13 to 19 digits that pass the Luhn check (a payment card number).",
    ),
    Rule("iban", PII, "IBAN", "An international bank account number (mod 97)."),
    Rule(
        "us-ssn",
        PII,
        "US social security number",
        "A US social security number (123-45-6789).",
    ),
)
CUSTOM_PII_PREFIX = "pii:"


def rule_kind(rule_id: str) -> str:
    """A rule's class; a catalog's own PII pattern (``pii:<name>``) is ``pii``."""
    if rule_id.startswith(CUSTOM_PII_PREFIX):
        return PII
    found = RULES.get(rule_id)
    return found.kind if found is not None else MODEL_TEXT


def result_class(rule_id: str) -> str:
    """The result policy's class of a rule: model text is ``injection``."""
    kind = rule_kind(rule_id)
    return "injection" if kind in (MODEL_TEXT, CATALOG) else kind


def explain(rule_id: str) -> str:
    """The sentence a curator reads for a rule (a custom PII pattern's too)."""
    if rule_id.startswith(CUSTOM_PII_PREFIX):
        name = rule_id.removeprefix(CUSTOM_PII_PREFIX)
        return f"The catalog's own personal-data pattern {name!r}."
    found = RULES.get(rule_id)
    return found.explanation if found is not None else rule_id
