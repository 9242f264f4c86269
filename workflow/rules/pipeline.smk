# Per corpus: collect -> parse (chunks + file facts) -> graph -> entities. Each rule runs one
# `codeteacher stage` command; the stages reuse the previous index's per-file results.


rule collect:
    input:
        corpus_files,
    output:
        files=work("{corpus}", "files.json"),
    params:
        repo=corpus_path,
        globs=lambda w: glob_args(w.corpus),
        settings=settings_arg,
        sections=sections_hash("collect"),
    log:
        log_file("{corpus}", "collect"),
    benchmark:
        bench_file("{corpus}", "collect")
    threads: 1
    resources:
        mem_mb=1000,
        runtime=15,
    conda:
        "../envs/codeteacher.yaml"
    shell:
        "codeteacher stage collect {params.repo} --out {output.files} {params.globs}"
        " --settings {params.settings} > {log} 2>&1"


rule parse:
    input:
        files=work("{corpus}", "files.json"),
    output:
        chunks=work("{corpus}", "chunks.jsonl"),
        facts=work("{corpus}", "file_facts.json"),
    params:
        cache=cache_arg,
        settings=settings_arg,
        sections=sections_hash("parse"),
    log:
        log_file("{corpus}", "parse"),
    benchmark:
        bench_file("{corpus}", "parse")
    threads: 1
    resources:
        mem_mb=2000,
        runtime=60,
    conda:
        "../envs/codeteacher.yaml"
    shell:
        "codeteacher stage parse --files {input.files} --out {output.chunks} --cache {params.cache}"
        " --settings {params.settings} > {log} 2>&1"


rule graph:
    input:
        files=work("{corpus}", "files.json"),
        chunks=work("{corpus}", "chunks.jsonl"),
        facts=work("{corpus}", "file_facts.json"),
    output:
        structure=work("{corpus}", "project_structure.json"),
    params:
        settings=settings_arg,
        sections=sections_hash("graph"),
    log:
        log_file("{corpus}", "graph"),
    benchmark:
        bench_file("{corpus}", "graph")
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    conda:
        "../envs/codeteacher.yaml"
    shell:
        "codeteacher stage graph --files {input.files} --chunks {input.chunks}"
        " --out {output.structure} --settings {params.settings} > {log} 2>&1"


rule entities:
    input:
        files=work("{corpus}", "files.json"),
        chunks=work("{corpus}", "chunks.jsonl"),
        facts=work("{corpus}", "file_facts.json"),
        structure=work("{corpus}", "project_structure.json"),
    output:
        entities=work("{corpus}", "entities.jsonl"),
    params:
        settings=settings_arg,
        sections=sections_hash("entities"),
    log:
        log_file("{corpus}", "entities"),
    benchmark:
        bench_file("{corpus}", "entities")
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    conda:
        "../envs/codeteacher.yaml"
    shell:
        "codeteacher stage entities --files {input.files} --chunks {input.chunks}"
        " --structure {input.structure} --out {output.entities}"
        " --settings {params.settings} > {log} 2>&1"
