"""Tool files in each foreign format, written here (other projects' files are not committed): what a team
that used HolmesGPT, shellmcp, mcp-this or llm-functions would bring, with the shapes that matter (plain
commands, optional parts, pipes, quoting, a summarizer, a loop that cannot be brought)."""

HOLMES = r'''
toolsets:
  kubernetes/demo:
    description: Read access to the cluster
    prerequisites:
      - command: "kubectl version --client"
    llm_instructions: Always check events.
    tools:
      - name: "kubectl_describe"
        description: "Run kubectl describe <kind> <name> -n <namespace>"
        command: "kubectl describe {{ kind }} {{ name }}{% if namespace %} -n {{ namespace }}{% endif %}"
        transformers:
          - name: llm_summarize
            config: {input_threshold: 1000}
      - name: "kubectl_find_resource"
        description: "Find a resource by a substring of its name or labels"
        command: "kubectl get -A --show-labels -o wide {{ kind }} | grep {{ keyword }}"
      - name: "kubectl_services"
        description: "List services, in all namespaces unless one is given"
        command: "kubectl get services{% if namespace %} -n {{ namespace }}{% else %} -A{% endif %} -o wide"
      - name: "kubectl_jq_query"
        description: "Apply a jq filter to kubectl's JSON"
        script: |
          echo "kubectl get {{ kind }} | jq {{ jq_expr }}"
          kubectl get {{ kind }} --all-namespaces -o json | jq -c -r '{{ jq_expr }}'
      - name: "aws_cloudtrail_event_details"
        description: "One CloudTrail event"
        command: |
          aws cloudtrail lookup-events \
            --lookup-attributes AttributeKey=EventId,AttributeValue="{{ EVENT_ID }}" \
            --query 'Events[0]' --output json
      - name: "kubectl_logs_limited"
        description: "A pod's logs, with the toolset's timeout"
        command: "timeout {{ config.timeout | default(30) }} kubectl logs {{ pod_name }} -n {{ namespace }}"
      - name: "kubectl_pod_names"
        description: "Names of the pods matching a pattern, at most some lines"
        command: "kubectl get pods -A -o json | jq -r '.items[].metadata.name' | grep {{ pattern }} | head -n {{ lines | default('20') }}"
      - name: "kubectl_logs_all"
        description: "Every pod's logs"
        command: "{% for pod in pods %}kubectl logs {{ pod }};{% endfor %}"
'''

SHELLMCP = r'''
server:
  name: repo-tools
  desc: Tools over the repository
args:
  path_arg:
    help: A folder of the repository
    type: string
    default: "."
tools:
  ListFiles:
    cmd: "git ls-files {{ path }}"
    desc: List the files git tracks
    args:
      - name: path
        ref: path_arg
  SearchCode:
    cmd: "grep -rn '{{ pattern }}' {{ path }}"
    desc: Search the code
    args:
      - name: pattern
        help: Text to look for
      - name: path
        ref: path_arg
  read_file:
    cmd: "git show {{ path }} > copy.txt"
    desc: Save a file as git has it (named like nami's built-in read_file)
    args:
      - name: path
        ref: path_arg
  ContainerLogs:
    cmd: "docker logs {% if tail %}--tail 50 {% endif %}{{ container }}"
    desc: A container's logs
    args:
      - name: container
        help: The container
        pattern: "^[a-zA-Z0-9_.-]+$"
      - name: tail
        help: Only the last lines
        type: boolean
        default: false
'''

MCP_THIS = r'''
tools:
  curl:
    description: "Make HTTP requests"
    execution:
      command: "curl <<arguments>>"
    parameters:
      arguments:
        description: "Complete curl arguments including options and URL"
        required: true
toolsets:
  git:
    description: Git helpers
    tools:
      file-history:
        description: "Commits that touched a file"
        execution:
          command: "git log --oneline -n 5 -- '<<path>>'"
        parameters:
          path:
            description: "The file"
            required: true
      count-files:
        description: "How many files git tracks"
        execution:
          command: "git ls-files | wc -l"
'''

LLM_FUNCTIONS_PODS = r'''#!/usr/bin/env bash
set -e

# @describe List the pods of a namespace.
# @option --namespace! The namespace.
# @option --selector A label selector.
# @flag --wide Wide output.
# @env LLM_OUTPUT=/dev/stdout The output path

main() {
    args=(get pods -n "$argc_namespace")
    if [[ -n "${argc_selector:-}" ]]; then args+=(-l "$argc_selector"); fi
    if [[ -n "${argc_wide:-}" ]]; then args+=(-o wide); fi
    kubectl "${args[@]}" >> "$LLM_OUTPUT"
}

eval "$(argc --argc-eval "$0" "$@")"
'''

LLM_FUNCTIONS_HELM = r'''#!/usr/bin/env bash
set -e

# @describe Show a Helm release's status.
# @option --release! The release.
# @option --output[table|json|yaml] Output format.

main() {
    helm status "$argc_release" --output "${argc_output:-table}" >> "$LLM_OUTPUT"
}

eval "$(argc --argc-eval "$0" "$@")"
'''
