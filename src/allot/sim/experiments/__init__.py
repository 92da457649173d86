"""Reproducible experiments over traces: `fragmentation` is the FGD paper's openb experiment."""
