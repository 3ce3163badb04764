"""Helpers the trusted files (the experts, the context baselines) import in their own
sandboxes: never the grader's process, and nothing a submission needs. Standard library at
import time only."""
