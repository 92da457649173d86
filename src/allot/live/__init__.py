"""Reserved for the live scheduler (`allot run`), which has its own issue and is not built yet."""
