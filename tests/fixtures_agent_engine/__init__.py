"""Stand-ins of the Agent Engine service for the Agent Engine adapter tests."""
