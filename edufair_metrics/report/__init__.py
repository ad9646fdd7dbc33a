"""Stage 6, reports: reading runs from lm-eval output folders, the paper's tables, figures, the
summary and the leaderboard."""
