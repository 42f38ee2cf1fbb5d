"""Transcript archives taken before compaction: manifests, hash chain, stores."""
