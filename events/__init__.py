"""The space's feed (SPEC §17): every change of a space as an event, numbered in commit order."""
