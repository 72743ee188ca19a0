"""Export, then share (SPEC §7.3): a steward's export of a space, written by a worker under a
lease of its operation, and the share links that stream it back. Its own app: models,
worker (``services``), command (``run_worker``) and routes (``api``)."""
