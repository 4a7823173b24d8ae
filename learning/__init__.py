"""Each catalog's labelled requests, their evaluation, and what selection learns from
them (issue "Quiver learns each catalog")."""
