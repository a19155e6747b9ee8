{{- define "epollfix.name" -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "epollfix.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{- define "epollfix.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The MutatingAdmissionPolicy API: the value, else v1 from 1.36 (GA), else
     v1beta1 where the cluster serves it (1.34, 1.35 with the API turned on). */}}
{{- define "epollfix.policyApiVersion" -}}
{{- $v1 := "admissionregistration.k8s.io/v1" -}}
{{- $beta := "admissionregistration.k8s.io/v1beta1" -}}
{{- if .Values.injection.apiVersion -}}
{{- .Values.injection.apiVersion -}}
{{- else if or (.Capabilities.APIVersions.Has (printf "%s/MutatingAdmissionPolicy" $v1)) (semverCompare ">=1.36.0-0" .Capabilities.KubeVersion.Version) -}}
{{- $v1 -}}
{{- else if .Capabilities.APIVersions.Has (printf "%s/MutatingAdmissionPolicy" $beta) -}}
{{- $beta -}}
{{- else -}}
{{- fail (printf "epollfix: this cluster (%s) serves no MutatingAdmissionPolicy API (v1 from 1.36, v1beta1 in 1.34 and 1.35 when turned on): set injection.enabled=false and add the library as doc/kubernetes.md says, or set injection.apiVersion" .Capabilities.KubeVersion.Version) -}}
{{- end -}}
{{- end -}}

{{/* The init container of the initContainer mode, as one line of CEL (it is
     included inside a folded YAML scalar). Its own securityContext passes the
     restricted Pod Security level whatever the pod's. */}}
{{- define "epollfix.copier" -}}
Object.spec.initContainers{name: "epollfix-copy", image: {{ include "epollfix.image" . | quote }}, imagePullPolicy: {{ .Values.image.pullPolicy | quote }}, command: ["/bin/epollfix", "copy-files", "/epollfix-copy"], volumeMounts: [Object.spec.initContainers.volumeMounts{name: "epollfix", mountPath: "/epollfix-copy"}], securityContext: Object.spec.initContainers.securityContext{runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: Object.spec.initContainers.securityContext.capabilities{drop: ["ALL"]}, seccompProfile: Object.spec.initContainers.securityContext.seccompProfile{type: "RuntimeDefault"}}, resources: Object.spec.initContainers.resources{requests: { {{- range $k, $v := .Values.injection.initContainer.resources.requests }}{{ $k | quote }}: {{ $v | toString | quote }}, {{ end -}} }, limits: { {{- range $k, $v := .Values.injection.initContainer.resources.limits }}{{ $k | quote }}: {{ $v | toString | quote }}, {{ end -}} }}}
{{- end -}}
