"""Isaac Lab Mimic source: many lift-cube demos generated from a few annotated ones (MimicGen-style)."""
