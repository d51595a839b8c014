"""Fixtures of the leaderboard tests: a deterministic toy lm-eval model and a toy QA task family."""
