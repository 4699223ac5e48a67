{{- define "nfd.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "nfd.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "nfd.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride }}
{{- end }}

{{- define "nfd.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "nfd.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "nfd.selectorLabels" -}}
app.kubernetes.io/name: {{ include "nfd.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "nfd.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{- define "nfd.featureGates" -}}
{{- $gates := list }}
{{- range $k, $v := .Values.featureGates }}{{ $gates = append $gates (printf "%s=%t" $k $v) }}{{ end }}
{{- join "," $gates }}
{{- end }}

{{- define "nfd.master.serviceAccountName" -}}
{{- if .Values.master.serviceAccount.create }}{{ default (include "nfd.fullname" .) .Values.master.serviceAccount.name }}{{ else }}{{ default "default" .Values.master.serviceAccount.name }}{{ end }}
{{- end }}
{{- define "nfd.worker.serviceAccountName" -}}
{{- if .Values.worker.serviceAccount.create }}{{ default (printf "%s-worker" (include "nfd.fullname" .)) .Values.worker.serviceAccount.name }}{{ else }}{{ default "default" .Values.worker.serviceAccount.name }}{{ end }}
{{- end }}
{{- define "nfd.topologyUpdater.serviceAccountName" -}}
{{- if .Values.topologyUpdater.serviceAccount.create }}{{ default (printf "%s-topology-updater" (include "nfd.fullname" .)) .Values.topologyUpdater.serviceAccount.name }}{{ else }}{{ default "default" .Values.topologyUpdater.serviceAccount.name }}{{ end }}
{{- end }}
{{- define "nfd.gc.serviceAccountName" -}}
{{- if .Values.gc.serviceAccount.create }}{{ default (printf "%s-gc" (include "nfd.fullname" .)) .Values.gc.serviceAccount.name }}{{ else }}{{ default "default" .Values.gc.serviceAccount.name }}{{ end }}
{{- end }}

{{- /* Pod-level settings every component takes, as upstream: (dict "root" $ "v" .Values.<component>) */}}
{{- define "nfd.podCommon" -}}
{{- with (.v.priorityClassName | default .root.Values.priorityClassName) }}
priorityClassName: {{ . }}
{{- end }}
{{- if .v.hostNetwork }}
hostNetwork: true
{{- end }}
dnsPolicy: {{ .v.dnsPolicy | default "ClusterFirstWithHostNet" }}
{{- if kindIs "bool" .v.hostUsers }}
hostUsers: {{ .v.hostUsers }}
{{- end }}
{{- /* imagePullSecrets wins over global.imagePullSecrets (the subchart fallback), as upstream */}}
{{- with (.root.Values.imagePullSecrets | default ((.root.Values.global | default dict).imagePullSecrets)) }}
imagePullSecrets: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .v.initContainers }}
initContainers: {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{- /* A probe: the chart's defaults overlaid with the user's tuning, (dict "base" (dict ...) "tune" .Values.x.livenessProbe) */}}
{{- define "nfd.probe" -}}
{{- toYaml (merge (deepCopy (.tune | default (dict))) .base) }}
{{- end }}

{{- /* The pods' rollout checksum of a component's config: of the config values alone with
  checksumValuesOnly, else of the rendered ConfigMap (its labels change with the chart), as
  upstream. (dict "root" $ "config" .Values.<component>.config) */}}
{{- define "nfd.configChecksum" -}}
{{- if .root.Values.checksumValuesOnly }}
{{- toYaml .config | sha256sum }}
{{- else }}
{{- printf "%s\n%s" (include "nfd.labels" .root) (toYaml .config) | sha256sum }}
{{- end }}
{{- end }}
