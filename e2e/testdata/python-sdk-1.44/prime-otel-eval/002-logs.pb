
ß
÷
"
telemetry.sdk.language
python
%
telemetry.sdk.name
opentelemetry
!
telemetry.sdk.version
1.44.0
=
service.instance.id&
$19ef68e1-d406-4522-b72c-e00c795b2832

prime.run.kind
eval

prime.run.key
py-otel-eval
!
prime.run.name
gsm8k-nightly
$
prime.run.model
Qwen/Qwen3-0.6B
4
prime.run.environments*

primeintellect/gsm8k
$
prime.run.config
{"rollouts":3}
 
prime.eval.tags*
	
nightly
#
prime.eval.framework
	verifiers
!
service.name
unknown_serviceâ


prime_otel0.1.0Ê	ly·ÌÇî*¦
£{"id":"b0768127f0f44dedafb4df545673a26d","env":{"id":"primeintellect/gsm8k","name":"gsm8k"},"task":{"type":"MathTask","data":{"idx":0,"question":"What is 0 + 0?","answer":"0"}},"run":{"type":"eval","work":{"type":"eval","step":0}},"ok":true,"errors":[],"traces":[{"version":1,"id":"2d890200f0ce41d693c164db6ff80ee0","task":{"type":"MathTask","data":{"idx":0,"question":"What is 0 + 0?","answer":"0"}},"agent":{"name":"solver","trainable":true},"nodes":[{"message":{"role":"system","content":"Answer briefly."},"sampled":false,"token_ids":[1,2]},{"parent":0,"message":{"role":"user","content":"What is 0 + 0?"},"sampled":false,"token_ids":[3,4,5]},{"parent":1,"message":{"role":"assistant","content":"0"},"sampled":true,"token_ids":[6,7],"logprobs":[-0.1,-0.2]}],"calls":[{"node":2,"model":"Qwen/Qwen3-0.6B","usage":{"prompt_tokens":5,"completion_tokens":2},"time":{"start":1796403845.314319,"end":1796403846.314319}}],"rewards":{"correct_answer":{"score":1.0,"weight":1.0}},"metrics":{"num_turns":1.0},"info":{"advantage":0.5},"is_completed":true,"ok":true}]}Y)Õ·ÌÇîbprime.episode