"""The Hub layer: every Hub call (client), its pacing and its call deadlines (guard)."""
