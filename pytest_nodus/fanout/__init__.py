"""Grades spread over many machines. Runs in a pipeline's process and in its cluster's
workers, never in a sandbox: every grade is still a pytest process of its own with its own
sandboxes (``pytest_nodus.grade``), so spreading them changes nothing that is sealed."""
