"""Selection's services: each one owns a write (and its audit row) or an answer.

``select`` answers /select; ``settings`` writes a catalog's engine settings;
``validate`` checks one tool call; ``tool_calls`` decides a model's tool calls
against a selection. They reach the outside world only through ``selection.adapters``.
"""
