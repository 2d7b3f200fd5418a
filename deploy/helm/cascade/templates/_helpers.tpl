{{/*
Several replicas on PostgreSQL when a database URL or a Secret holding one is given;
otherwise one replica on SQLite (the StatefulSet). Non-empty means yes.
*/}}
{{- define "cascade.replicated" -}}
{{- if or .Values.database.url .Values.database.existingSecret -}}
{{- if hasPrefix "sqlite" (lower .Values.database.url) -}}
{{- fail "database.url is a SQLite URL: leave database empty for one replica on SQLite (a StatefulSet), or give a postgres:// URL for several replicas" -}}
{{- end -}}
true
{{- end -}}
{{- end -}}

{{/* The Secret holding the database URL: the one given, or the one this chart makes from database.url. */}}
{{- define "cascade.databaseSecret" -}}
{{- .Values.database.existingSecret | default (printf "%s-database" .Release.Name) -}}
{{- end -}}

{{/*
The cascade container, the same in the StatefulSet and the Deployment; replicas also get the
database URL and their lease.
*/}}
{{- define "cascade.container" -}}
- name: cascade
  image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
  args: ["--shutdown-grace", "{{ .Values.shutdownGraceSeconds }}"]
  env:
    - { name: CASCADE_GITHUB_APP_ID, value: {{ .Values.github.appId | quote }} }
    - name: CASCADE_GITHUB_WEBHOOK_SECRET
      valueFrom: { secretKeyRef: { name: {{ .Values.github.existingSecret }}, key: webhook-secret } }
    - { name: CASCADE_GITHUB_PRIVATE_KEY_FILE, value: /secrets/private-key.pem }
    - { name: CASCADE_PARALLELISM, value: {{ .Values.parallelism | quote }} }
    {{- if .Values.allowForks }}
    - { name: CASCADE_ALLOW_FORKS, value: "true" }
    {{- end }}
    {{- if include "cascade.replicated" . }}
    - name: CASCADE_DATABASE_URL
      valueFrom: { secretKeyRef: { name: {{ include "cascade.databaseSecret" . }}, key: {{ .Values.database.secretKey }} } }
    - { name: CASCADE_REPLICA_LEASE, value: {{ .Values.replicaLeaseSeconds | quote }} }
    {{- end }}
  ports:
    - { name: http, containerPort: 8080 }
  readinessProbe:
    httpGet: { path: /readyz, port: http }
  livenessProbe:
    httpGet: { path: /healthz, port: http }
  volumeMounts:
    - { name: data, mountPath: /var/lib/cascade }
    - { name: secrets, mountPath: /secrets, readOnly: true }
{{- end -}}

{{/* The App's private key, mounted at /secrets/private-key.pem. */}}
{{- define "cascade.secretsVolume" -}}
- name: secrets
  secret:
    secretName: {{ .Values.github.existingSecret }}
    items: [{ key: private-key.pem, path: private-key.pem }]
{{- end -}}
