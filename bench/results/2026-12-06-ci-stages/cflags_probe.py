import json,subprocess,shlex,os,time,resource,sys
cc={c['file']:c for c in json.load(open('build-asan/compile_commands.json'))}
files=['src/server/generation_handler.cc','src/chat/jinja_interp.cc','src/engine/engine.cc','src/server/http_server_test.cc','src/sched/scheduler_test.cc','src/kv/prefix_cache.cc']
base_flags=['-O2','-g','-fsanitize=address,undefined','-fno-omit-frame-pointer','-fno-sanitize-recover=undefined']
configs={
 'gcc O2 g asan': ('/usr/bin/c++', base_flags),
 'gcc O1 g1 asan': ('/usr/bin/c++', ['-O1','-g1','-fsanitize=address,undefined','-fno-omit-frame-pointer','-fno-sanitize-recover=undefined']),
 'clang O1 gline asan+fuzz': ('/usr/bin/clang++', ['-O1','-gline-tables-only','-fsanitize=fuzzer-no-link,address,undefined','-fno-omit-frame-pointer','-fno-sanitize-recover=undefined']),
 'clang O1 gline tsan': ('/usr/bin/clang++', ['-O1','-gline-tables-only','-fsanitize=thread']),
}
for name,(comp,flags) in configs.items():
    tot=0
    for f in files:
        c=cc['/work/ci4/'+f]['command']
        args=shlex.split(c)
        args=[a for a in args if a not in base_flags]
        args[0]=comp; args[1:1]=flags
        i=args.index('-o'); args[i+1]='/tmp/probe.o'
        r0=resource.getrusage(resource.RUSAGE_CHILDREN)
        p=subprocess.run(args,cwd=cc['/work/ci4/'+f]['directory'],env=dict(os.environ,CCACHE_DISABLE='1'),capture_output=True)
        r1=resource.getrusage(resource.RUSAGE_CHILDREN)
        if p.returncode: print(name,f,p.stderr[:300]); 
        tot+=(r1.ru_utime-r0.ru_utime)+(r1.ru_stime-r0.ru_stime)
    print(f'{name}: {tot:.1f} s cpu for {len(files)} files', flush=True)
