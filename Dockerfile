# agui-relay as a small static image (about 10 MB): a static Go binary on
# distroless/static, which carries CA certificates, tzdata and a non-root
# user and nothing else (no shell, no package manager).
#
#   docker build -t agui-relay .
#   docker run --rm -p 8080:8080 -p 9090:9090 agui-relay                       # the demo agent
#   docker run --rm -p 8080:8080 -p 9090:9090 agui-relay --upstream http://agent:8000
#
# Arguments after the image name are serve flags; every flag also reads
# AGUI_RELAY_<FLAG>. See docs/reference.md.

FROM golang:1.26 AS build
WORKDIR /src
# Modules first, so that a change of the sources does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Static (no cgo, no libc), no build paths, no symbol tables: deploy_test.go
# builds with this very command and checks that the result is static.
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/agui-relay .

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/agui-relay /agui-relay
# UID 65532, no home, no shell.
USER nonroot:nonroot
# The binary listens on localhost by default; inside a container the
# traffic comes from outside it. Environment variables, not arguments, so
# that both `docker run … --upstream …` and AGUI_RELAY_* settings work, and
# a --listen given as an argument still wins.
ENV AGUI_RELAY_LISTEN=0.0.0.0:8080 \
    AGUI_RELAY_ADMIN_LISTEN=0.0.0.0:9090
# 8080: relayed traffic (--listen); 9090: /healthz, /readyz, /metrics (--admin-listen).
EXPOSE 8080 9090
ENTRYPOINT ["/agui-relay"]
CMD ["serve"]
