"""The plan as data: Plan, Action, Verb and the saved plan file; no workflow, no rendering."""
