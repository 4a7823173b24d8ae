"""The lexical index: BM25F impacts and binary field postings, built once per snapshot.

Each (term, tool) pair holds its precomputed BM25F evidence, so a query only adds
up its own terms' postings and nothing scans the catalog; the sum over the query's
IDF is the share of its information a tool covers, comparable across queries. An
example's words count only where the catalog describes them, and a long text earns
no more per word, so a tool's words stay honest evidence.
The rules: docs/explanation/selection.md, The lexical index.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from selection.engine.text import split_camel_case, stem, token_set, tokenize, words
from selection.engine.types import ToolRecord

FieldText = Callable[[ToolRecord], str]


def name_text(tool: ToolRecord) -> str:
    """The name's words, then the original name's words the name lacks: a tool
    imported under a safe name is found by what its file called it, and a name
    that only lost its punctuation does not count its words twice."""
    text = split_camel_case(tool.name).replace("_", " ")
    if not tool.original_name:
        return text
    have = token_set(text)
    more = [w for w in words(tool.original_name) if stem(w) not in have]
    return " ".join([text, *more]) if more else text


FIELD_TEXT: dict[str, FieldText] = {
    "name": name_text,
    "title": lambda t: t.title,
    "keywords": lambda t: " ".join(t.keywords),
    "examples": lambda t: " ".join(t.examples),
    "description": lambda t: t.description,
    "category": lambda t: t.category.replace("/", " "),
    "tags": lambda t: " ".join(t.tags),
    "params": lambda t: t.param_text,
    "avoid_when": lambda t: t.avoid_when,
}
# Fields whose words count as plain "overlap" with the query (seeds 000 and 002).
OVERLAP_FIELDS = ("name", "title", "description", "category", "tags", "keywords")
# A field whose words count only where some tool uses them in another field, and
# at this share of a description's in the keyword share.
EXAMPLES = "examples"
EXAMPLE_SHARE = 0.5
# Distinct overlap words, as a multiple of the catalog's median, from which a
# tool's keyword share is scaled down (bench/README.md, "A ranking nobody can buy").
LONG_TEXT_KNEE = 4.0


@dataclass(frozen=True)
class Postings:
    """Compressed rows: for term id ``t``, ``docs[offsets[t]:offsets[t+1]]``."""

    offsets: np.ndarray
    docs: np.ndarray
    values: np.ndarray | None = None
    # A patched index (selection.engine.delta): rows whose postings above are out
    # of date, and those rows' current postings, term id -> (rows, values).
    dead: np.ndarray | None = None
    extra: Mapping[int, tuple[np.ndarray, np.ndarray | None]] | None = None

    def rows(self, term: int) -> tuple[np.ndarray, np.ndarray | None]:
        """The tools (and values, when stored) for one term id."""
        if term + 1 >= len(self.offsets):  # a term only a patched tool has
            docs, vals = self.docs[:0], None if self.values is None else self.values[:0]
        else:
            lo, hi = int(self.offsets[term]), int(self.offsets[term + 1])
            docs = self.docs[lo:hi]
            vals = None if self.values is None else self.values[lo:hi]
        if self.dead is None:
            return docs, vals
        return self._patched(term, docs, vals)

    def gather(
        self, terms: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """The tools (and values) of several term ids at once, concatenated in
        the order of ``terms``: (tools, the position in ``terms`` each entry
        belongs to, values). One request's terms cost a few array operations
        instead of a Python loop over ``rows``."""
        terms = np.asarray(terms, dtype=np.int64)
        if self.dead is not None or int(terms.max(initial=-1)) + 1 >= len(self.offsets):
            return self._gathered_by_term(terms)
        starts = self.offsets[terms]
        counts = self.offsets[terms + 1] - starts
        which = np.repeat(np.arange(len(terms)), counts)
        first = np.cumsum(counts) - counts  # each term's first entry in the output
        at = np.arange(int(counts.sum())) + np.repeat(starts - first, counts)
        vals = None if self.values is None else self.values[at]
        return self.docs[at], which, vals

    def _gathered_by_term(
        self, terms: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """``gather`` through ``rows``, for a patched index."""
        found = [self.rows(int(term)) for term in terms]
        which = np.repeat(np.arange(len(terms)), [len(docs) for docs, _ in found])
        docs = np.concatenate([self.docs[:0], *(docs for docs, _ in found)])
        if self.values is None:
            return docs, which, None
        vals = [self.values[:0] if v is None else v for _, v in found]
        return docs, which, np.concatenate([self.values[:0], *vals])

    def _patched(
        self, term: int, docs: np.ndarray, vals: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """Rows without the out-of-date ones, plus the patched rows' own."""
        assert self.dead is not None
        live = ~self.dead[docs]
        docs = docs[live]
        vals = None if vals is None else vals[live]
        more = (self.extra or {}).get(term)
        if more is None:
            return docs, vals
        docs = np.concatenate([docs, more[0]])
        if vals is not None and more[1] is not None:
            vals = np.concatenate([vals, more[1]])
        return docs, vals


def _csr(terms: np.ndarray, docs: np.ndarray, vocab: int) -> tuple[np.ndarray, ...]:
    """Sort (term, doc) pairs, merge duplicates; return order, offsets and uniques."""
    key = terms.astype(np.int64) * (int(docs.max(initial=0)) + 1) + docs
    order = np.argsort(key, kind="stable")
    key = key[order]
    first = np.ones(len(key), dtype=bool)
    first[1:] = key[1:] != key[:-1]
    starts = np.flatnonzero(first)
    uterms = terms[order][starts]
    counts = np.bincount(uterms, minlength=vocab)
    offsets = np.zeros(vocab + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return order, starts, uterms, docs[order][starts].astype(np.int32), offsets


def idf(df: np.ndarray | float, n_docs: int) -> np.ndarray:
    """Okapi IDF, always positive: ln(1 + (N - df + 0.5) / (df + 0.5))."""
    return np.log1p((n_docs - np.asarray(df, dtype=np.float64) + 0.5) / (df + 0.5))


class _FieldTokens:
    """Flat (term, tool, tf) triples and token counts for one field."""

    def __init__(self, n_docs: int) -> None:
        self.terms: list[int] = []
        self.docs: list[int] = []
        self.tfs: list[int] = []
        self.lengths = np.zeros(n_docs, dtype=np.float64)


def _merged(fields: Mapping[str, _FieldTokens], names: Sequence[str]) -> _FieldTokens:
    """One pseudo-field holding the triples of several fields."""
    out = _FieldTokens(0)
    for name in names:
        out.terms.extend(fields[name].terms)
        out.docs.extend(fields[name].docs)
        out.tfs.extend(fields[name].tfs)
    return out


def share_credit(sizes: np.ndarray, norm: float) -> np.ndarray:
    """Per tool, the keyword share's credit for its number of distinct words
    (see the module docstring)."""
    limit = LONG_TEXT_KNEE * max(norm, 1.0)
    return np.minimum(1.0, limit / np.maximum(np.asarray(sizes, np.float64), 1.0))


def described_terms(fields: Mapping[str, _FieldTokens], vocab: int) -> np.ndarray:
    """Per term id: whether some tool uses it outside its examples."""
    out = np.zeros(vocab, dtype=bool)
    for name, ft in fields.items():
        if name != EXAMPLES:
            out[np.asarray(ft.terms, dtype=np.int64)] = True
    return out


def kept_described(ft: _FieldTokens, described: np.ndarray) -> None:
    """Drop from ``ft`` (the examples) the words no tool describes, in place,
    and recount its lengths."""
    keep = [i for i, term in enumerate(ft.terms) if described[term]]
    ft.terms = [ft.terms[i] for i in keep]
    ft.docs = [ft.docs[i] for i in keep]
    ft.tfs = [ft.tfs[i] for i in keep]
    lengths = np.zeros(len(ft.lengths), dtype=np.float64)
    np.add.at(lengths, np.asarray(ft.docs, dtype=np.int64), ft.tfs)
    ft.lengths = lengths


class LexicalIndex:
    """Vocabulary, BM25F impact postings and per-field binary postings."""

    def __init__(
        self,
        tools: Sequence[ToolRecord],
        field_weights: Mapping[str, float],
        k1: float = 1.2,
        b: float = 0.75,
        keep_tokens: bool = False,
    ) -> None:
        self.n_docs = len(tools)
        self.vocab: Mapping[str, int] = {}
        # The exact index a patched one lays its changed rows over (None: exact),
        # and those rows' records (selection.engine.delta).
        self.base: LexicalIndex | None = None
        self.overlay: Mapping[int, ToolRecord] = {}
        self.params = (dict(field_weights), k1, b)
        self.field_df: dict[str, np.ndarray] = {}
        self.avg_len: dict[str, float] = {}
        fields = self._tokenize_all(tools)
        self.described = described_terms(fields, len(self.vocab))
        kept_described(fields[EXAMPLES], self.described)
        # Kept only for ``reweighted`` (learning.tuning), never in a snapshot.
        self._tokens = fields if keep_tokens else None
        self.doc_df = np.zeros(len(self.vocab), dtype=np.float64)
        self.fields: dict[str, Postings] = {}
        for name, ft in fields.items():
            self.fields[name] = self._binary(ft)
        self.fields["overlap"] = self._binary(_merged(fields, OVERLAP_FIELDS))
        with_examples = _merged(fields, (*OVERLAP_FIELDS, EXAMPLES))
        self.fields["overlap_examples"] = self._binary(with_examples)
        sizes = np.bincount(self.fields["overlap_examples"].docs, minlength=self.n_docs)
        self.overlap_norm = float(np.median(sizes[sizes > 0])) if sizes.any() else 1.0
        self.share_credit = share_credit(sizes, self.overlap_norm)
        self._doc_level_idf(fields)
        self.impacts = self._impacts(fields, field_weights, k1, b)
        self.unknown_idf = float(idf(0.0, max(self.n_docs, 1)))
        self.masses = {name: self._mass(name) for name in ("name", "tags", "category")}

    def reweighted(
        self, field_weights: Mapping[str, float], k1: float, b: float
    ) -> LexicalIndex:
        """The same index with other field weights / BM25 parameters: only the
        impacts are recomputed (learning.tuning tries many; tokenising is most
        of a build)."""
        if self._tokens is None:
            raise ValueError("reweighted needs an index built with keep_tokens")
        other = object.__new__(LexicalIndex)
        other.__dict__.update(self.__dict__)
        other.params = (dict(field_weights), k1, b)
        other.field_df, other.avg_len = {}, {}
        other.impacts = other._impacts(self._tokens, field_weights, k1, b)
        return other

    def _tokenize_all(self, tools: Sequence[ToolRecord]) -> dict[str, _FieldTokens]:
        """Tokenise every field of every tool into flat integer arrays."""
        out = {name: _FieldTokens(self.n_docs) for name in FIELD_TEXT}
        vocab: dict[str, int] = {}
        self.vocab = vocab
        for doc, tool in enumerate(tools):
            for name, text_of in FIELD_TEXT.items():
                tokens = tokenize(text_of(tool))
                if not tokens:
                    continue
                ft = out[name]
                ft.lengths[doc] = len(tokens)
                for token, tf in Counter(tokens).items():
                    ft.terms.append(vocab.setdefault(token, len(vocab)))
                    ft.docs.append(doc)
                    ft.tfs.append(tf)
        return out

    def _binary(self, ft: _FieldTokens) -> Postings:
        """Which tools contain each term in this field."""
        terms = np.asarray(ft.terms, dtype=np.int64)
        docs = np.asarray(ft.docs, dtype=np.int64)
        _, _, _, udocs, offsets = _csr(terms, docs, len(self.vocab))
        return Postings(offsets, udocs)

    def _doc_level_idf(self, fields: Mapping[str, _FieldTokens]) -> None:
        """IDF over whole tools (a term counts once per tool, in any field)."""
        terms = np.concatenate([np.asarray(f.terms, np.int64) for f in fields.values()])
        docs = np.concatenate([np.asarray(f.docs, np.int64) for f in fields.values()])
        if len(terms):
            _, _, uterms, _, _ = _csr(terms, docs, len(self.vocab))
            self.doc_df = np.bincount(uterms, minlength=len(self.vocab)).astype(float)
        self.idf = idf(self.doc_df, max(self.n_docs, 1)).astype(np.float32)

    def _impacts(
        self,
        fields: Mapping[str, _FieldTokens],
        weights: Mapping[str, float],
        k1: float,
        b: float,
    ) -> Postings:
        """Sum of field-weighted BM25 parts per (term, tool), capped at the IDF."""
        all_terms, all_docs, all_vals = [], [], []
        for name, ft in fields.items():
            weight = float(weights.get(name, 0.0))
            if weight <= 0 or not ft.terms:
                continue
            terms = np.asarray(ft.terms, dtype=np.int64)
            docs = np.asarray(ft.docs, dtype=np.int64)
            tf = np.asarray(ft.tfs, dtype=np.float64)
            avg = max(float(ft.lengths[ft.lengths > 0].mean()), 1.0)
            norm = 1.0 - b + b * ft.lengths[docs] / avg
            self.field_df[name] = np.bincount(terms, minlength=len(self.vocab))
            self.avg_len[name] = avg
            df = self.field_df[name][terms]
            sat = tf / (tf + k1 * norm)
            all_vals.append(weight * idf(df, self.n_docs) * sat)
            all_terms.append(terms)
            all_docs.append(docs)
        if not all_terms:
            empty = np.zeros(0, dtype=np.int32)
            return Postings(np.zeros(len(self.vocab) + 1, np.int64), empty, empty)
        full_credit = max(float(w) for w in weights.values())
        terms, docs = np.concatenate(all_terms), np.concatenate(all_docs)
        order, starts, uterms, udocs, offsets = _csr(terms, docs, len(self.vocab))
        summed = np.add.reduceat(np.concatenate(all_vals)[order], starts)
        capped = np.minimum(summed / full_credit, self.idf[uterms])
        return Postings(offsets, udocs, capped.astype(np.float32))

    def _mass(self, field_name: str) -> np.ndarray:
        """Per tool: total IDF of the distinct terms of one field."""
        post = self.fields[field_name]
        mass = np.zeros(self.n_docs, dtype=np.float64)
        counts = np.diff(post.offsets)
        terms = np.repeat(np.arange(len(counts)), counts)
        np.add.at(mass, post.docs, self.idf[terms])
        return mass

    def counts_in_examples(self, term: str) -> bool:
        """Whether a word of an example counts (some tool describes it); a word
        only a patched tool has is given the benefit of the doubt."""
        found = self.vocab.get(term)
        if found is None:
            return False
        return found >= len(self.described) or bool(self.described[found])

    def term_ids(self, terms: Mapping[str, float]) -> list[tuple[int | None, float]]:
        """Vocabulary ids for query terms (``None`` when the catalog lacks it)."""
        return [(self.vocab.get(t), w) for t, w in terms.items()]

    def term_idf(self, term_id: int | None) -> float:
        """Document IDF of a term id; absent terms get the highest possible IDF."""
        return self.unknown_idf if term_id is None else float(self.idf[term_id])
