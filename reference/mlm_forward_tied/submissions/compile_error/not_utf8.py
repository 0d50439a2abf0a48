"""Compile error: saved as Latin-1 (the é below is one byte, 0xe9)."""

# café
import torch
