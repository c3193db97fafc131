"""chrf-components command line."""
