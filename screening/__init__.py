"""Screening: pure rules that find text aimed at the model, secrets and personal
data in tool definitions and tool results.

No Django here (and nothing of Quiver's apps): the catalog screens definitions
at import and edit, sources at sync and calls screen results, each passing what
it knows (the catalog's other tools, the catalog's policy). Every rule has an id,
a class and a sentence a curator can read (``screening.rules.RULES``); a finding
names its rule and where it was found, never (for a result) what it found.
"""
