{{- define "warden.name" -}}
{{- .Values.nameOverride | default .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "warden.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := .Values.nameOverride | default .Chart.Name }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
An image reference from {registry, repository, tag, digest}: [registry/]repository[:tag][@digest], the digest pinning
it where given. Called with (list <image values> <default tag>).
*/}}
{{- define "warden.imageRef" -}}
{{- $image := index . 0 }}
{{- $tag := $image.tag | default (index . 1) | toString }}
{{- if $image.registry }}{{ $image.registry }}/{{ end }}{{ $image.repository }}{{ if $tag }}:{{ $tag }}{{ end }}{{ if $image.digest }}@{{ $image.digest }}{{ end }}
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
Gate mode routing clients by role: every healthy pod Ready, the Service selecting the label warden keeps. gate.routing
auto: role with standbys (replicas > 1), readiness for a single pod (no API access for nothing).
*/}}
{{- define "warden.roleRouting" -}}
{{- and (eq .Values.mode "gate") (or (eq .Values.gate.routing "role") (and (eq .Values.gate.routing "auto") (gt (int .Values.replicas) 1))) }}
{{- end }}

{{/* Whether warden talks to the API server (a Lease, the Service's Endpoints, Events): its ServiceAccount and token. */}}
{{- define "warden.apiAccess" -}}
{{- or (eq (include "warden.leaseMode" .) "true") (eq (include "warden.roleRouting" .) "true") .Values.events.enabled }}
{{- end }}

{{/* Whole seconds of a "10s" value (the schema allows nothing else for the gate's timings). */}}
{{- define "warden.seconds" -}}
{{- trimSuffix "s" (toString .) | atoi }}
{{- end }}

{{/*
The longest the kubelet takes to stop a stalled lilbee supervisor's container (its liveness probe: the period times the
failures, its timeout, and its grace): warden.gate.supervisor.stall-bound, in seconds.
*/}}
{{- define "warden.stallBound" -}}
{{- with .Values.lilbee.supervisor.liveness }}
{{- add (mul .periodSeconds .failureThreshold) .timeoutSeconds .terminationGracePeriodSeconds }}
{{- end }}
{{- end }}

{{/*
The inequalities gate mode's safety rests on, from the same values warden checks them with at start (GateTimings;
docs/modes.md, "The timings"): a lilbee outlives its permit by at most the longer of the supervisor's grace and the
kubelet's restart of a stalled supervisor; that and the permit must end within the settle, and in lease mode within
the Lease after the renew deadline.
*/}}
{{- define "warden.checkTimings" -}}
{{- if eq .Values.mode "gate" }}
{{- $settle := include "warden.seconds" .Values.gate.settle | int }}
{{- $permit := include "warden.seconds" .Values.gate.supervisor.permit | int }}
{{- $grace := include "warden.seconds" .Values.gate.supervisor.grace | int }}
{{- $stall := include "warden.stallBound" . | int }}
{{- $overrun := max $grace $stall }}
{{- $pause := include "warden.seconds" .Values.gate.pauseMargin | int }}
{{- if ge (add $permit $overrun) $settle }}
{{- fail (printf "gate.settle %s must be longer than gate.supervisor.permit %s plus the longer of gate.supervisor.grace %s and the kubelet's restart of a stalled supervisor (lilbee.supervisor.liveness: %ds): a pod whose gate file was replaced may run its lilbee that long" .Values.gate.settle .Values.gate.supervisor.permit .Values.gate.supervisor.grace $stall) }}
{{- end }}
{{- if and (ne .Values.gate.election "lease") (or (lt (sub (sub $settle $permit) $grace) $pause) (lt (sub (add $permit $overrun) $grace) $pause)) }}
{{- fail (printf "gate.settle %s less gate.supervisor.permit %s and gate.supervisor.grace %s, or the permit and the overrun less the grace, leaves less than gate.pauseMargin %s: a pod whose gate file was replaced, or whose lock another node's pod cannot see, its node frozen that long as its permit ends, stops its lilbee after another pod has taken over" .Values.gate.settle .Values.gate.supervisor.permit .Values.gate.supervisor.grace .Values.gate.pauseMargin) }}
{{- end }}
{{- if eq .Values.gate.election "lease" }}
{{- $duration := include "warden.seconds" .Values.gate.lease.duration | int }}
{{- $deadline := include "warden.seconds" .Values.gate.lease.renewDeadline | int }}
{{- if lt (sub (sub $duration $deadline) $grace) $pause }}
{{- fail (printf "gate.lease.duration %s less gate.lease.renewDeadline %s and gate.supervisor.grace %s leaves less than gate.pauseMargin %s: a node frozen that long just before its lilbee's permit ends stops it after the Lease can pass" .Values.gate.lease.duration .Values.gate.lease.renewDeadline .Values.gate.supervisor.grace .Values.gate.pauseMargin) }}
{{- end }}
{{- $retry := include "warden.seconds" .Values.gate.lease.retryPeriod | int }}
{{- if ge $retry $deadline }}
{{- fail (printf "gate.lease.retryPeriod %s must be shorter than gate.lease.renewDeadline %s" .Values.gate.lease.retryPeriod .Values.gate.lease.renewDeadline) }}
{{- end }}
{{- if ge (add $deadline $overrun) $duration }}
{{- fail (printf "gate.lease.duration %s must be longer than gate.lease.renewDeadline %s plus the longer of gate.supervisor.grace %s and the kubelet's restart of a stalled supervisor (lilbee.supervisor.liveness: %ds): a leader cut off from the API server must have its lilbee stopped before the Lease can pass" .Values.gate.lease.duration .Values.gate.lease.renewDeadline .Values.gate.supervisor.grace $stall) }}
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
{{ include "warden.imageRef" (list .Values.image (printf "%s%s" .Chart.AppVersion (ternary "-native" "" (eq .Values.image.flavour "native")))) }}
{{- end }}

{{- define "warden.containerSecurityContext" -}}
runAsNonRoot: true
{{- with .Values.runAsUser }}
runAsUser: {{ . }}
runAsGroup: {{ . }}
{{- end }}
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
    # The kubelet probes from the node: its addresses keep a share of warden's connections no other peer can take.
    - name: WARDEN_HTTP_NODE_ADDRESSES
      valueFrom: {fieldRef: {fieldPath: status.hostIPs}}
    {{- if eq .Values.mode "gate" }}
    # Ready only once lilbee answers too (with a 401: it asks a token even there, and that shows it serves).
    - {name: WARDEN_GATE_HEALTH_URL, value: "http://127.0.0.1:{{ .Values.lilbee.port }}/api/health"}
    - {name: WARDEN_GATE_ELECTION, value: {{ .Values.gate.election | quote }}}
    - {name: WARDEN_GATE_HANDOVER_AFTER, value: {{ .Values.gate.handoverAfter | quote }}}
    # lilbee's supervisor connects here, on a volume only warden's and lilbee's containers mount; the timings are the
    # supervisor's and its liveness probe's own, for the checks warden makes at start.
    - {name: WARDEN_GATE_SUPERVISOR_SOCKET, value: /run/warden/switch.sock}
    - {name: WARDEN_GATE_SETTLE, value: {{ .Values.gate.settle | quote }}}
    - {name: WARDEN_GATE_PAUSE_MARGIN, value: {{ .Values.gate.pauseMargin | quote }}}
    - {name: WARDEN_GATE_SUPERVISOR_PERMIT, value: {{ .Values.gate.supervisor.permit | quote }}}
    - {name: WARDEN_GATE_SUPERVISOR_GRACE, value: {{ .Values.gate.supervisor.grace | quote }}}
    - {name: WARDEN_GATE_SUPERVISOR_STALL_BOUND, value: "{{ include "warden.stallBound" . }}s"}
    {{- if eq .Values.gate.election "lease" }}
    - {name: WARDEN_GATE_LEASE_NAME, value: {{ include "warden.leaseName" . | quote }}}
    {{- with .Values.gate.lease.namespace }}
    - {name: WARDEN_GATE_LEASE_NAMESPACE, value: {{ . | quote }}}
    {{- end }}
    - {name: WARDEN_GATE_LEASE_DURATION, value: {{ .Values.gate.lease.duration | quote }}}
    - {name: WARDEN_GATE_LEASE_RENEW_DEADLINE, value: {{ .Values.gate.lease.renewDeadline | quote }}}
    - {name: WARDEN_GATE_LEASE_RETRY_PERIOD, value: {{ .Values.gate.lease.retryPeriod | quote }}}
    {{- end }}
    {{- if eq (include "warden.roleRouting" .) "true" }}
    # Role routing: the serving warden writes its pod's address in the Service's Endpoints (of the Service's name),
    # with the ports the Service's are served on in this pod.
    - {name: WARDEN_GATE_ROUTING, value: role}
    - {name: WARDEN_GATE_ROLE_ENDPOINTS, value: {{ include "warden.fullname" . | quote }}}
    - {name: WARDEN_GATE_ROLE_PORTS, value: "http={{ .Values.lilbee.port }},api={{ .Values.warden.port }},management={{ .Values.warden.managementPort }}"}
    - name: POD_IP
      valueFrom: {fieldRef: {fieldPath: status.podIP}}
    {{- end }}
    {{- end }}
    {{- if eq (include "warden.apiAccess" .) "true" }}
    # The pod warden routes to and records Events on; with the node, the Lease's holder identity (<pod>@<node>):
    # restarted in place, warden renews its Lease.
    - name: POD_NAME
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
    - name: NODE_NAME
      valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
    {{- end }}
    {{- if .Values.events.enabled }}
    # The Events name the pod by its UID too, so that they follow it and not a later pod of the same name.
    - name: POD_UID
      valueFrom: {fieldRef: {fieldPath: metadata.uid}}
    - {name: WARDEN_EVENTS_ENABLED, value: "true"}
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
    {{- if eq (include "warden.roleRouting" .) "true" }}
    # Role routing: every healthy pod is Ready (everyday tools see the release healthy); the Service routes through the
    # Endpoints warden writes.
    httpGet: {path: /q/health/group/routable, port: {{ .Values.warden.managementPort }}}
    {{- else }}
    httpGet: {path: /q/health/ready, port: {{ .Values.warden.managementPort }}}
    {{- end }}
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
    {{- if eq .Values.mode "gate" }}
    - {name: warden-switch, mountPath: /run/warden}
    {{- end }}
    {{- if eq (include "warden.apiAccess" .) "true" }}
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
