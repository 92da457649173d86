"""Data: the openb trace files as shipped by Alibaba (gzipped), their digests and attribution."""
