"""Rule families, one module each; `rllint.registry.load_rules` imports them all."""
