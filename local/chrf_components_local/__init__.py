"""The template's functions run on this machine as AWS runs them, without Docker: what `chrf-components invoke` and
`chrf-components serve` use, split as SAM CLI splits its local commands.

* ``template``: reading template.yaml: functions (CodeUri, Handler, layers, Timeout, environment) and the HTTP API's
  routes (the functions' HttpApi events); a handler loaded as Lambda loads it.
* ``runtime``: execution environments in worker processes, as Lambda runs a function.
* ``invoke_api``: the Lambda Invoke API (``POST /2015-03-31/functions/{name}/invocations``).
* ``http_api``: the HTTP API as API Gateway serves it: routing from the template, the payload v2 event, the proxy
  integration's response.
* ``server``: both APIs on one port (waitress), with SigV4 checked as AWS checks it (``sigv4``) under ``--iam``.

The command line's research commands import nothing of it.
"""
