"""What the three apps (spaces, allocation, tasks) share, and nothing else: refusals and their
rendering, database helpers, the database backend and row decoding. It imports no app."""
