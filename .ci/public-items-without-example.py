#!/usr/bin/env python3
"""Lists the public items of the library and blockbloom-redis whose docs have no example
and no "Example at" pointer to one (#34: every public item documented with an example).
Run from the repository root; not yet a CI check (79 left)."""
import re,sys,glob
files=[f for f in glob.glob('src/**/*.rs',recursive=True) if 'bench_support' not in f]+glob.glob('redis/src/*.rs')
missing=[]
for f in files:
    lines=open(f).read().split('\n')
    for i,l in enumerate(lines):
        m=re.match(r'\s*pub (fn|struct|enum|trait|const|type) (\w+)',l)
        if not m: continue
        # collect doc block above (skip attributes)
        j=i-1; doc=[]
        while j>=0 and (lines[j].strip().startswith('///') or lines[j].strip().startswith('#[')):
            if lines[j].strip().startswith('#[doc(hidden)]') : doc.append('HIDDEN')
            doc.append(lines[j]); j-=1
        d='\n'.join(doc)
        if 'HIDDEN' in d: continue
        if '```' in d or 'xample' in d: continue
        missing.append(f"{f}:{i+1}: {m.group(1)} {m.group(2)}")
print(len(missing)); print('\n'.join(missing))
