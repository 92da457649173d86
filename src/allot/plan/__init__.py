"""The one-shot planner behind `allot place`: place every pending pod once and explain the rest."""
