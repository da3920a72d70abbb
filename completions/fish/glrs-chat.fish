complete -c glrs-chat -l resume -d 'Open a session by id or unique prefix; with no ID, pick one (newest first)' -r
complete -c glrs-chat -s k -l key -d 'Continue the session of this key, or start one (resets: session.reset in the config)' -r
complete -c glrs-chat -l parent -d 'With --key, when a new session starts: begin it as a copy of this one (unless it is over parentForkMaxTokens)' -r
complete -c glrs-chat -s m -l model -d 'The model, as provider/model-id (openai/gpt-4.1, anthropic/claude-sonnet-4-5, ollama/llama3.2)' -r
complete -c glrs-chat -l system -d 'Replace the default system prompt (else "systemPrompt" in the config; a resumed session keeps its own)' -r
complete -c glrs-chat -l allow -d 'Allow tool calls matching RULE without asking: TOOL or TOOL:GLOB (bash:git *, edit:src/**); repeatable' -r
complete -c glrs-chat -l thinking -d 'Thinking level: off, low, medium or high (Anthropic budgets 4k/12k/32k tokens; OpenAI reasoning_effort); saved with the session' -r -f -a "off\t''
low\t''
medium\t''
high\t''"
complete -c glrs-chat -s p -l prompt -d 'Run one turn with this prompt: the reply on stdout, the session id on stderr' -r
complete -c glrs-chat -s c -l continue -d 'Open the newest session started in this directory'
complete -c glrs-chat -l allow-all -d 'Allow every tool call without asking (permissions.deny still applies)'
complete -c glrs-chat -l no-tools -d 'Offer the model no tools at all'
complete -c glrs-chat -l json -d 'With a one-shot turn: print {id, reply, usage} as JSON'
complete -c glrs-chat -s h -l help -d 'Print help (see more with \'--help\')'
complete -c glrs-chat -s V -l version -d 'Print version'
