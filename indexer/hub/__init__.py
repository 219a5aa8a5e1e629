"""The Hub layer: every Hub call (client), its pacing and its call deadlines (guard)."""

# Seconds one Hub call may take with all its retries (guard.CallGuard); the crawl's --request-timeout default.
DEFAULT_CALL_SECONDS = 120.0
