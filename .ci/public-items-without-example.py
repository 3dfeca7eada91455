#!/usr/bin/env python3
"""Lists the public items of the library and blockbloom-redis whose docs have no example
and no "Example at" pointer to one (#34: every public item documented with an example).
Run from the repository root by .ci/run: exits 1 if any is left.

Not public API, so not listed: items only re-exported under the non-default `internals`
feature (tuning knobs, benchmark hooks) and `pub` items of private modules."""
import re,sys,glob
# shard_format.rs and expiring/in_place.rs (`planes_in_place`): `#[doc(hidden)]` modules,
# for the server module only.
files=[f for f in glob.glob('src/**/*.rs',recursive=True) if 'bench_support' not in f and not f.endswith('in_place.rs')]+[f for f in glob.glob('redis/src/*.rs') if not f.endswith('shard_format.rs')]
missing=[]
# Reachable only with `--features internals`, or `pub` inside a private module (storage/).
NOT_PUBLIC={'PREFETCH_DISTANCE','PAR_CHUNK','prefetch_read','prefetch_write','coarse_clock_nanos','coarse_clock_resolution'}
for f in files:
    lines=open(f).read().split('\n')
    for i,l in enumerate(lines):
        m=re.match(r'\s*pub (fn|struct|enum|trait|const|type) (\w+)',l)
        if not m or m.group(2) in NOT_PUBLIC: continue
        # collect doc block above (skip attributes)
        j=i-1; doc=[]
        while j>=0 and lines[j].strip().startswith(('///','#[','note =',')]')):
            if lines[j].strip().startswith('#[doc(hidden)]') : doc.append('HIDDEN')
            doc.append(lines[j]); j-=1
        d='\n'.join(doc)
        if 'HIDDEN' in d: continue
        if '```' in d or 'xample' in d: continue
        missing.append(f"{f}:{i+1}: {m.group(1)} {m.group(2)}")
print(len(missing)); print('\n'.join(missing))
sys.exit(1 if missing else 0)
