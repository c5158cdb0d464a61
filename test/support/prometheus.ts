/**
 * Parses a Prometheus text exposition with the Prometheus project's own Python client
 * (`prometheus_client.parser`, Debian's python3-prometheus-client, which .ci/run installs). The
 * JavaScript parsers on npm are unmaintained ports that drop the labels of histograms; this one is
 * the reference client's, and it raises on a malformed line, which fails the test.
 */
const SCRIPT = `
import json, sys
from prometheus_client.parser import text_string_to_metric_families
out = []
for f in text_string_to_metric_families(sys.stdin.read()):
    out.append({"name": f.name, "type": f.type, "help": f.documentation,
                "samples": [{"name": s.name, "labels": s.labels, "value": s.value} for s in f.samples]})
print(json.dumps(out))
`

export const PYTHON = "/usr/bin/python3"

export interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}
export interface Family {
  /** The family name without `_total` for counters, as the parser reports it. */
  readonly name: string
  readonly type: string
  readonly help: string
  readonly samples: ReadonlyArray<Sample>
}

export const parseExposition = async (text: string): Promise<ReadonlyArray<Family>> => {
  const child = Bun.spawn([PYTHON, "-c", SCRIPT], { stdin: new Blob([text]), stdout: "pipe", stderr: "pipe" })
  const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  if (code !== 0) throw new Error(`the Prometheus parser refused the exposition: ${err}`)
  return JSON.parse(out) as ReadonlyArray<Family>
}
