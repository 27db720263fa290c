{{- define "warden.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "warden.fullname" -}}
{{- if contains .Chart.Name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "warden.selectorLabels" -}}
app.kubernetes.io/name: {{ include "warden.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "warden.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "warden.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "warden.leaseName" -}}
{{- .Values.gate.lease.name | default (printf "%s-gate" (include "warden.fullname" .)) }}
{{- end }}

{{- define "warden.leaseMode" -}}
{{- and (eq .Values.mode "gate") (eq .Values.gate.election "lease") }}
{{- end }}

{{/*
lilbee's command in gate mode: python3 -c <this> lilbee <args>. It runs lilbee only while warden's startup check
says this pod's lilbee may run (a warden that is stalled or gone says nothing), and when lilbee dies it waits for
that again and starts it again itself, so a crash costs no kubelet back-off: once warden hands the gate over
(warden.gate.handover-after), the pod it goes to starts its lilbee at once, however often that lilbee crashed
before. A quick exit waits longer each time (1 s doubling to 30 s; back to 1 s after a minute's run). SIGTERM and
SIGINT are passed to lilbee, whose exit code this exits with.
*/}}
{{- define "warden.waitForTheGate" -}}
import signal, subprocess, sys, time, urllib.request
url = "http://127.0.0.1:{{ .Values.warden.managementPort }}/q/health/started"
lilbee = None
stopping = None
def stop(signum, frame):
    global stopping
    stopping = signum
    if lilbee is not None:
        lilbee.send_signal(signum)
signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
def started():
    try:
        with urllib.request.urlopen(url, timeout=1) as answer:
            return answer.status == 200
    except OSError:
        return False
pause = 1
while stopping is None:
    if not started():
        print("waiting for warden to let lilbee start (" + url + ")", flush=True)
        while stopping is None and not started():
            time.sleep(1)
        if stopping is not None:
            break
    began = time.monotonic()
    lilbee = subprocess.Popen(sys.argv[1:])
    if stopping is not None:
        lilbee.send_signal(stopping)
    code = lilbee.wait()
    lilbee = None
    if stopping is not None:
        sys.exit(128 - code if code < 0 else code)
    if time.monotonic() - began >= 60:
        pause = 1
    print("lilbee exited (" + str(code) + "); started again once warden lets it, in " + str(pause) + " s", flush=True)
    for second in range(pause):
        if stopping is None:
            time.sleep(1)
    pause = min(pause * 2, 30)
{{- end }}

{{/*
In Lease mode, a stalled warden's lilbee is stopped by its liveness probe within 9 s; the Lease can pass to another
pod no sooner than duration - 2 x retryPeriod after warden stalled (its last renewal may have been sent a retry
period before, and taken up to one). Checked where both are whole seconds ("15s").
*/}}
{{- define "warden.checkLeaseTimings" -}}
{{- if eq (include "warden.leaseMode" .) "true" }}
{{- $duration := toString .Values.gate.lease.duration }}
{{- $retry := toString .Values.gate.lease.retryPeriod }}
{{- if and (regexMatch "^[0-9]+s$" $duration) (regexMatch "^[0-9]+s$" $retry) }}
{{- if le (sub (atoi (trimSuffix "s" $duration)) (mul 2 (atoi (trimSuffix "s" $retry)))) 9 }}
{{- fail (printf "gate.lease.duration %s is too short for retryPeriod %s: the Lease could pass to another pod before the kubelet stops a stalled warden's lilbee (9 s); duration - 2 x retryPeriod must exceed 9 s (the defaults: 15s and 2s)" $duration $retry) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/* Whether the pod runs llama-swap beside warden: not in gate mode (lilbee starts its own), not for an external engine. */}}
{{- define "warden.engineContainer" -}}
{{- and (ne .Values.mode "gate") .Values.engine.enabled }}
{{- end }}

{{/* warden's image: image.tag, or the flavour's tag (the app version, with -native for the native executable). */}}
{{- define "warden.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default (printf "%s%s" .Chart.AppVersion (ternary "-native" "" (eq .Values.image.flavour "native"))) }}
{{- end }}

{{- define "warden.containerSecurityContext" -}}
runAsNonRoot: true
runAsUser: 1001
runAsGroup: 1001
readOnlyRootFilesystem: true
allowPrivilegeEscalation: false
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "warden.container" -}}
- name: warden
  image: {{ include "warden.image" . | quote }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  {{- if .Values.nativeSidecar }}
  restartPolicy: Always
  {{- end }}
  args: [serve]
  ports:
    - name: api
      containerPort: {{ .Values.warden.port }}
    - name: management
      containerPort: {{ .Values.warden.managementPort }}
  env:
    - {name: QUARKUS_HTTP_PORT, value: {{ .Values.warden.port | quote }}}
    - {name: QUARKUS_MANAGEMENT_PORT, value: {{ .Values.warden.managementPort | quote }}}
    - {name: WARDEN_MODE, value: {{ .Values.mode | quote }}}
    # The release label on warden's series: the alerts count the pods serving a data dir per release.
    - {name: WARDEN_METRICS_RELEASE, value: {{ .Release.Name | quote }}}
    {{- if eq .Values.mode "gate" }}
    # Ready only once lilbee answers too (with a 401: it asks a token even there, and that shows it serves).
    - {name: WARDEN_GATE_HEALTH_URL, value: "http://127.0.0.1:{{ .Values.lilbee.port }}/api/health"}
    - {name: WARDEN_GATE_ELECTION, value: {{ .Values.gate.election | quote }}}
    - {name: WARDEN_GATE_HANDOVER_AFTER, value: {{ .Values.gate.handoverAfter | quote }}}
    {{- if eq .Values.gate.election "lease" }}
    - {name: WARDEN_GATE_LEASE_NAME, value: {{ include "warden.leaseName" . | quote }}}
    {{- with .Values.gate.lease.namespace }}
    - {name: WARDEN_GATE_LEASE_NAMESPACE, value: {{ . | quote }}}
    {{- end }}
    - {name: WARDEN_GATE_LEASE_DURATION, value: {{ .Values.gate.lease.duration | quote }}}
    - {name: WARDEN_GATE_LEASE_RENEW_DEADLINE, value: {{ .Values.gate.lease.renewDeadline | quote }}}
    - {name: WARDEN_GATE_LEASE_RETRY_PERIOD, value: {{ .Values.gate.lease.retryPeriod | quote }}}
    - {name: WARDEN_GATE_LEASE_FENCE_GRACE, value: {{ .Values.gate.lease.fenceGrace | quote }}}
    # The Lease's holder identity is the pod; the node only names where it runs, in the log.
    - name: POD_NAME
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
    - name: NODE_NAME
      valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
    {{- end }}
    {{- end }}
    - {name: WARDEN_DATA_ROOT, value: {{ .Values.warden.dataRoot | quote }}}
    - {name: WARDEN_ENGINE_DIR, value: {{ .Values.warden.engineDir | quote }}}
    {{- with .Values.warden.scopeDir }}
    - {name: WARDEN_SCOPE_DIR, value: {{ . | quote }}}
    {{- end }}
    - {name: WARDEN_LOCK_POLL_INTERVAL, value: {{ .Values.warden.lockPollInterval | quote }}}
    - {name: WARDEN_STARTUP_REQUIRE_LOCK, value: {{ .Values.warden.startupRequireLock | quote }}}
    - {name: WARDEN_LIVENESS_STALL_TIMEOUT, value: {{ .Values.warden.livenessStallTimeout | quote }}}
    - {name: WARDEN_REAPER_ENABLED, value: {{ .Values.warden.reaper.enabled | quote }}}
    - {name: WARDEN_REAPER_INTERVAL, value: {{ .Values.warden.reaper.interval | quote }}}
    - {name: WARDEN_REAPER_IDLE_TTL, value: {{ .Values.warden.reaper.idleTtl | quote }}}
    - {name: WARDEN_REAPER_LOCK_NAME, value: {{ .Values.warden.reaper.lockName | quote }}}
    {{- with .Values.warden.engineUrl }}
    - {name: WARDEN_ENGINE_URL, value: {{ . | quote }}}
    {{- end }}
    {{- with .Values.warden.engineReadiness }}
    - {name: WARDEN_ENGINE_READINESS, value: {{ . | quote }}}
    {{- end }}
    {{- if .Values.warden.engineApiKey.existingSecret }}
    # A file only warden's container mounts, not a variable in the pod spec (docs/security.md, "The pod boundary").
    - {name: WARDEN_ENGINE_API_KEY_FILE, value: /var/run/secrets/warden-engine/{{ .Values.warden.engineApiKey.key }}}
    {{- end }}
    {{- if .Values.warden.apiToken.existingSecret }}
    - {name: WARDEN_API_TOKEN_FILE, value: /var/run/secrets/warden/{{ .Values.warden.apiToken.key }}}
    {{- end }}
    {{- if .Values.warden.logJson }}
    - {name: QUARKUS_LOG_CONSOLE_JSON_ENABLED, value: "true"}
    {{- end }}
    {{- with .Values.warden.extraEnv }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  # Probes on the management port, by number: a named port is not resolved by every runtime (podman kube play).
  startupProbe:
    httpGet: {path: /q/health/started, port: {{ .Values.warden.managementPort }}}
    periodSeconds: 1
    # A standby may wait for the lock for as long as the holder lives.
    failureThreshold: 2147483647
  readinessProbe:
    httpGet: {path: /q/health/ready, port: {{ .Values.warden.managementPort }}}
    periodSeconds: 2
    failureThreshold: 1
  livenessProbe:
    # Never on the lock: a standby restarted for waiting could never take over.
    httpGet: {path: /q/health/live, port: {{ .Values.warden.managementPort }}}
    periodSeconds: 10
    failureThreshold: 3
    # A stalled warden still holds its lock: the pod's 45 s grace (for llama-swap's drain) would keep every
    # standby waiting that much longer. warden itself needs about a second to let go.
    terminationGracePeriodSeconds: 5
  resources:
    {{- toYaml .Values.warden.resources | nindent 4 }}
  securityContext:
    {{- include "warden.containerSecurityContext" . | nindent 4 }}
  volumeMounts:
    - {name: shared, mountPath: {{ .Values.warden.dataRoot | quote }}}
    # A /tmp of warden's own: the JVM's attach files and unpacked native libraries are nobody else's.
    - {name: warden-tmp, mountPath: /tmp}
    {{- if eq (include "warden.leaseMode" .) "true" }}
    - {name: gate-token, mountPath: /var/run/secrets/kubernetes.io/serviceaccount, readOnly: true}
    {{- end }}
    {{- if .Values.warden.apiToken.existingSecret }}
    - {name: api-token, mountPath: /var/run/secrets/warden, readOnly: true}
    {{- end }}
    {{- if .Values.warden.engineApiKey.existingSecret }}
    - {name: engine-api-key, mountPath: /var/run/secrets/warden-engine, readOnly: true}
    {{- end }}
{{- end }}

{{/* The series of this release, for the alerts' expressions: its namespace (the scrape's label) and its release (warden's). */}}
{{- define "warden.alertSelector" -}}
namespace="{{ .Release.Namespace }}", release="{{ .Release.Name }}"
{{- end }}

{{/* An alert's labels: (list $ severity); its severity and alerts.additionalLabels. */}}
{{- define "warden.alertLabels" -}}
severity: {{ index . 1 }}
{{- with (index . 0).Values.alerts.additionalLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
An alert's annotations: (list $ anchor summary description). The description ends with the runbook's place in
docs/operations.md; with alerts.runbookUrl (where that page is published) there is a runbook_url too.
*/}}
{{- define "warden.alertAnnotations" -}}
{{- $anchor := index . 1 -}}
summary: {{ index . 2 | quote }}
description: {{ printf "%s Runbook: docs/operations.md#%s" (index . 3) $anchor | quote }}
{{- with (index . 0).Values.alerts.runbookUrl }}
runbook_url: {{ printf "%s#%s" . $anchor | quote }}
{{- end }}
{{- end }}
