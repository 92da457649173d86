"""Reserved for the node agent (`allot agent`), which has its own issue and is not built yet."""
