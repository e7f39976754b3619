"""Sample agents over the home-automation tools, one per framework."""
