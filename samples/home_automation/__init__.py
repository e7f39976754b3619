"""A simulated smart home (devices, temperatures, user preferences, schedules), as in Vertex AI's agent-eval docs.

``tools`` holds the tools, ``policy`` the deterministic rules the sample agents follow, and
``dataset.jsonl`` the cases with reference trajectories and responses.
"""

from pathlib import Path

DATASET = Path(__file__).with_name("dataset.jsonl")
