
·
˜
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
$03753c7d-9248-4dc9-976a-6480be4d2068
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
unknown_service‰


prime_otel0.1.0Ã	DîèÔnÓ*®
•{"id":"40cf23b72e8649f8a9c50b5303df235a","env":{"id":"primeintellect/gsm8k","name":"gsm8k"},"task":{"type":"MathTask","data":{"idx":0,"question":"What is 0 + 0?","answer":"0"}},"run":{"type":"eval","work":{"type":"eval","step":0}},"ok":true,"errors":[],"traces":[{"version":1,"id":"4d71ab62b0124dd392ae30df8028a278","task":{"type":"MathTask","data":{"idx":0,"question":"What is 0 + 0?","answer":"0"}},"agent":{"name":"solver","trainable":true},"nodes":[{"message":{"role":"system","content":"Answer briefly."},"sampled":false,"token_ids":[1,2]},{"parent":0,"message":{"role":"user","content":"What is 0 + 0?"},"sampled":false,"token_ids":[3,4,5]},{"parent":1,"message":{"role":"assistant","content":"0"},"sampled":true,"token_ids":[6,7],"logprobs":[-0.1,-0.2]}],"calls":[{"node":2,"model":"Qwen/Qwen3-0.6B","usage":{"prompt_tokens":5,"completion_tokens":2},"time":{"start":1796397966.0886314,"end":1796397967.0886314}}],"rewards":{"correct_answer":{"score":1.0,"weight":1.0}},"metrics":{"num_turns":1.0},"info":{"advantage":0.5},"is_completed":true,"ok":true}]}Y)êÔnÓbprime.episode