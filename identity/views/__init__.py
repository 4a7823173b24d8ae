"""Identity's console pages: API keys and people.

Views parse input, check permission, call one service and render; every write
goes through ``identity.services``."""
