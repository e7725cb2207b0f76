// This file holds the template llmcloud uses for models that ship no chat template (base models
// such as stories260K): a plain "User:/Assistant:" transcript ending in "Assistant:".
package chattmpl

// PlainTranscript renders system text as a paragraph, then "User: ..." and "Assistant: ..."
// lines, and "Assistant:" when a generation prompt is asked for. Pair it with the stop string
// "\nUser:" so a base model does not write the user's next turn.
const PlainTranscript = `{{ bos_token }}{% for m in messages %}{% if m.role == 'system' %}{{ m.content }}

{% elif m.role == 'user' %}User: {{ m.content }}
{% else %}Assistant: {{ m.content }}
{% endif %}{% endfor %}{% if add_generation_prompt %}Assistant:{% endif %}`
