"""Tool calls through Quiver: validated, approved by a person where required, run
against the tool's upstream source, and audited (issue "Quiver in the call path")."""
