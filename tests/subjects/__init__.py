"""Subject programs for kb-anonymity test data, each with a seeded data generator."""
