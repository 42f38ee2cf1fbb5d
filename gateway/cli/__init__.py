"""`agent-gateway`: one module per subcommand (`add_parser` and `run`), argument parsing and
dispatch only; each imports what its command needs when it runs. Nothing imports `cli`.
"""
