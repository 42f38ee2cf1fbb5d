"""Team spend budgets: limits per UTC calendar window, counted in nano-dollars.

`limits` parses the tokens file's `budget:` and computes windows (pure); `ledger` defines
the store protocol and the in-process store; `redis_ledger` keeps the counters in Redis so
every replica enforces one budget; `estimate` prices a request before it is sent; `local`
reads a run's spend from the local span file; `enforcer` makes the decision every shell
enforces (holds, settles, a run's charge, refusals, leases).
"""
