"""Stage 5, paired statistics: Wilcoxon/rank-biserial contrasts with bootstrap CIs, the contrast grid,
lm-eval aggregations and the baseline-vs-candidate comparison."""
