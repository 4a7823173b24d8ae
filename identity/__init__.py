"""Identity and access: people, groups, API keys, and the one module that decides
who may see what (identity.access)."""
