"""Renders a Report: a compact human table, or one JSON object."""
