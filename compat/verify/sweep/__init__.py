"""`compat verify --server URL --baseline URL2 --concurrency 1,2,4,8,16`: does speculation pay at this load?

levels.py   the levels and how many requests each sends (bounded in requests and time)
pair.py     the two servers: the same model and tokenizer, a baseline that does not speculate (else refused)
measure.py  the sweep: per level the counters around compat's own requests, then the baseline's; interrupted or
            a server gone: the levels measured so far are kept, and where it stopped is said
judge.py    the crossover and the verdict with its reason (acceptance, the drafter's own cost, batch effects)
document.py the JSON document; render.py text and markdown; page.py the static page (inline SVG)
profile.py  speculation_profile.json: ModelOpt's schema 1.0 with compat's fields beside it; compare.py --compare
command.py  the command line's side (commands/verify.py dispatches through compat/verify/server/options.py)
"""
