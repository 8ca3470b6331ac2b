"""The BG social-networking workload: schema, generator, D-Zipfian, actions, sessions, mixes."""
