"""A model's tool calls, as providers return them: parse -> validate -> decide.

``parse`` (pure) finds the calls in any provider's output, ``hints`` (pure) turns
schema errors into sentences for the model, ``service`` decides each call against
the catalog, the caller's access and the linked selection, and audits the answer.
"""
