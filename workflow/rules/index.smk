# Embedding (a GPU job when `gpu: true`) and the final index. The index stage writes
# embeddings/<corpus>/index atomically (temporary directory + rename), so a failed job leaves
# the previous index as it was; the declared output is a stamp (see index_stamp in common.smk).


rule embed:
    input:
        unpack(embed_inputs),
    output:
        embedded=directory(work("{corpus}", "embedded")),
    params:
        explanations=explanations_arg,
        cache=cache_arg,
        settings=settings_arg,
        sections=sections_hash("embed"),
    log:
        log_file("{corpus}", "embed"),
    benchmark:
        bench_file("{corpus}", "embed")
    threads: 2
    resources:
        mem_mb=8000,
        runtime=120,
        **gpu_resources(),
    conda:
        "../envs/codeteacher.yaml"
    shell:
        "codeteacher stage embed --chunks {input.chunks} --entities {input.entities}"
        " {params.explanations} --out {output.embedded} --cache {params.cache}"
        " --settings {params.settings} > {log} 2>&1"


rule index:
    input:
        unpack(embed_inputs),
        facts=work("{corpus}", "file_facts.json"),
        structure=work("{corpus}", "project_structure.json"),
        embedded=work("{corpus}", "embedded"),
    output:
        stamp=index_stamp("{corpus}"),
    params:
        work=lambda w, input: os.path.dirname(input.files),
        index=lambda w, output: index_dir(w.corpus),
        settings=settings_arg,
        sections=sections_hash("index"),
    log:
        log_file("{corpus}", "index"),
    benchmark:
        bench_file("{corpus}", "index")
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../envs/codeteacher.yaml"
    shell:
        "codeteacher stage index --work {params.work} --out {params.index}"
        " --name {wildcards.corpus}"
        " --settings {params.settings} > {log} 2>&1"
        " && cp {params.index}/manifest.json {output.stamp}"
