"""The L2 file format, without a simulator: its names (schema), its one reader (L2File), its rules (validate)
and the read guard for untrusted files (hdf5_guard)."""
