"""The curators' console: server-rendered pages with htmx fragments.

Views parse input, check permission, call one service or queryset method and
render; every write goes through ``catalog.services``.
"""
